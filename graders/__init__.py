"""graders."""
