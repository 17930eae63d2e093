"""Scoring: the one Score type, the scorer (judge) protocol, batch and cluster scoring."""
