"""Aggregation: the per-instance results of a run into the paper's tables and plots."""
