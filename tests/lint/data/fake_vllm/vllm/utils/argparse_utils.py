import argparse


class EnableDisableAction(argparse.BooleanOptionalAction):
    """Pairs --enable-x with --disable-x (the extractor only checks that it exists)."""
