"""Data generators and loaders shared by several papers."""
