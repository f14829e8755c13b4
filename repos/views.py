"""The console's Changes tab of a run (filled in below)."""
