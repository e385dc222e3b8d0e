"""The five pipeline nodes: measure -> prune -> partition -> summarize -> assemble."""
