"""The command-line app: the only code that prints for humans or picks exit codes."""
