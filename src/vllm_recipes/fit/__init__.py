"""Will it fit? Memory and KV-cache planning for a resolved selection (pure core; edges in probe/sources)."""
