"""The rendering's refusal, in a module of its own: the CLI catches it around every command
without importing the renderer for the commands that render nothing (``show``, ``list``)."""


class UnsafeValue(ValueError):
    """A value that cannot be written into a command as what it is (an env key that is no name, a binary
    with shell syntax, an image that is no image reference): the rendering refuses it rather than guess."""
