"""budgets."""
