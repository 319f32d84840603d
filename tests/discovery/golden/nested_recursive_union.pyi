class Tree(TypedDict):
    """A labelled tree; each node may carry a shape."""
    label: str
    shape: NotRequired[Circle | Square | None]
    children: NotRequired[list[Tree]]  # Sub-trees, drawn left to right.

class Circle(TypedDict):
    """A circle centred on its node."""
    kind: Literal['circle']
    radius: float  # Radius in pixels.

class Square(TypedDict):
    """An axis-aligned square centred on its node."""
    kind: Literal['square']
    side: float  # Side length in pixels.

class DrawResult(TypedDict):
    drawn: int  # How many nodes were drawn.
    bounds: tuple[float, float, float, float]
    warnings: list[str]

class Refusal(TypedDict):
    """What a call returns instead of its result when the host refuses it; nothing ran.
    Check: match result: case {"refused": True, "message": message}: ..."""
    refused: Literal[True]
    module: str
    operation: str
    reason: Literal['not-granted', 'read-only-grant', 'confirmation-unavailable', 'confirmation-declined']
    message: str  # What happened and what to do instead.


# apps.canvas.shapes.draw
async def draw(*, tree: Tree, style: Literal['outline', 'filled'] = 'outline', scale: float | None = None, layer: str | None = None) -> DrawResult | Refusal:
    """Draw a tree of shapes on the canvas.

    Nothing is erased first; draw onto an empty layer to start clean.

    tree: The root of the tree to draw.
    scale: Zoom factor; None fits the canvas.

    Access: write; a person confirms each call.
    """
