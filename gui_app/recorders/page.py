"""What an agent and the recorder share: the episode-over signal (both agents' scripts unwind on it)."""

from __future__ import annotations


class EpisodeOver(Exception):
    """Raised by the page handle when the environment ended the episode; unwinds the agent."""
