"""Scoring: the one Score type, the scorer (judge) protocol, batch and cluster scoring, and the instructions users give
runs that have none."""
