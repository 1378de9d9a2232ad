"""Run reports for people: one self-contained HTML page per run (`ilh view`)."""
