"""backupbench: what will this storage do under my backup jobs?"""

__version__ = "0.1.0"
