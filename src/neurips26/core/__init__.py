"""Parts every paper uses: config, tracking, trainer, seeding, io, plotting, metrics, claims."""
