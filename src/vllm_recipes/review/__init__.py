"""Impact review of a recipe change: what the rendered commands of two catalogs differ in.

An analysis over the whole pipeline (like ``lint/``): it loads nothing itself, resolves selections with the
engine and renders them with the renderers, then compares. The CLI prints the result (``vllm-recipes
diff``).
"""
