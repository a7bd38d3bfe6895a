"""neurips26: NeurIPS 2026 papers re-run as one Snakemake workflow.

Kept free of heavy imports: `neurips26 --help` must start in well under a second.
"""

__version__ = "0.1.0"
