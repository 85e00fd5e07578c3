"""The one error type for bad user input."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input: names the file, the record and the field, and says what was expected.

    Example message: ``gt.json: annotations[12] (id 40017): expected `dimensions` to be 3 finite numbers, got [1.0, nan, 2.0]``.
    """

    def __init__(self, file: str | None, record: str | int | None, field: str | None, expected: str,
                 got: object = None):
        self.file = None if file is None else str(file)
        self.record = record
        self.field = field
        self.expected = expected
        self.got = got
        where = self.file or "<input>"
        if record is not None:
            where += f": {record}"
        what = f"expected `{field}` to be {expected}" if field else f"expected {expected}"
        if got is not None:
            text = repr(got)
            what += f", got {text[:200] + '...' if len(text) > 200 else text}"
        super().__init__(f"{where}: {what}")
