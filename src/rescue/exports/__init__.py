"""Exports for training and sharing: chat examples for fine-tuning (:mod:`.chat`) and Hugging Face ``datasets``
folders with a dataset card (:mod:`.hf`). Both render with the tasks' own code, so an exported prompt is
byte for byte the prompt ``rescue run`` sends."""

# Its face is its two modules.
__all__ = [
    "chat",
    "hf",
]
