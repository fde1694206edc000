"""Code run by the workflow rules: benchmark loading, judging, transitions, aggregation."""
