"""A home-made session service as a team writes one (issue 51): see sessions.py."""
