"""Stand-in for the torch package; the provenance stamp is written next to this file."""
