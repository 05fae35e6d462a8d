"""Where a store keeps its own model and the error a model's use raises, apart from the model
(numpy, Arrow): ``toolwatch train|score|scan --help`` and the dashboard's and the demo's
settings name the path without loading the scorer. Standard library only."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from toolwatch.usage import UserError

#: Where a store keeps its own model (relative to the store root): ``toolwatch train`` writes
#: it there by default, and scoring, the dashboard and the demo look for it there.
MODEL_IN_STORE: Final = Path("models") / "model.json"


class ModelError(UserError, ValueError):
    """A model cannot be built, used or loaded; the message names the file and the problem."""


def model_path_for(store_root: Path, explicit: str | os.PathLike[str] | None = None) -> Path:
    """The model to use: ``explicit`` if given, else the store's own (which must exist)."""
    if explicit:
        return Path(explicit)
    path = Path(store_root) / MODEL_IN_STORE
    if not path.exists():
        raise ModelError(
            f"no model given and none in the store ({path}); run `toolwatch train` first "
            "or pass --model FILE"
        )
    return path
