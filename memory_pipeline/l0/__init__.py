"""The L0 index: workspace files chunked, embedded and written to LanceDB, per tenant."""
