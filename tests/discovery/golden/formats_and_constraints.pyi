class Slot(TypedDict):
    """A bookable slot."""
    start: str  # When it starts. [a date and time, ISO 8601 (2024-05-01T09:30:00Z)]
    minutes: int  # [0 < minutes <= 480]
    code: str  # [len(code) == 4, matches the pattern ^[A-Z]{3}\d$]

class Refusal(TypedDict):
    """What a call returns instead of its result when the host refuses it; nothing ran.
    Check: match result: case {"refused": True, "message": message}: ..."""
    refused: Literal[True]
    module: str
    operation: str
    reason: Literal['not-granted', 'read-only-grant', 'confirmation-unavailable', 'confirmation-declined']
    message: str  # What happened and what to do instead.


# booking.tables.book
async def book(*, day: str, length: str, ref: str, price: float, name: str, at: str | None = None, party: int = 2, tags: list[str] = ['main'], seats: list[int] = [], days: list[str] = [], kind: Literal['table', 'bar'] = 'table', slots: list[Slot] = [], corner: tuple[int, int] = [0, 0]) -> Slot | Refusal:
    """Book a table.

    day: The day to book. [a date, YYYY-MM-DD]
    at: [a time, HH:MM:SS]
    length: How long. [a duration, ISO 8601 (PT1H30M)]
    ref: [format uuid]
    party: How many people. [1 <= party <= 12]
    price: [0 <= price < 10000, a multiple of 0.01]
    name: [1 <= len(name) <= 80]
    tags: [1 <= len(tags) <= 5, each item: len(item) <= 20]
    seats: [no duplicates]
    days: [each item: a date, YYYY-MM-DD]

    Access: write.
    """
