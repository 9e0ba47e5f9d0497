"""The error classes of container.md §12."""


class BoltError(Exception):
    def __init__(self, cls, message, tensor=None):
        super().__init__(message)
        self.cls = cls
        self.message = message
        self.tensor = tensor
