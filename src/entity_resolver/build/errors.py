"""The one error of the build."""


class BuildError(RuntimeError):
    """The sources cannot be built into a script; the message says which file and why."""
