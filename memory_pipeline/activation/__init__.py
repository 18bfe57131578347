"""Activation: which memories recall handed out and which were used (the access log), aged nightly
into an activation and a tier (hot, warm, cool) that breaks near-ties in recall."""
