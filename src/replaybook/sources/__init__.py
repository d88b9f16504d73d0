"""Input formats. Each module registers one :class:`~replaybook.sources.registry.Source`."""

from .registry import Source, get, names, register, sniff_file

__all__ = ["Source", "get", "names", "register", "sniff_file"]
