"""The loaders as they were before the columnar rewrite (commit c926022), kept as the parity reference."""
