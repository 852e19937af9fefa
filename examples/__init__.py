"""Example agents written the way a user would write them; none of them knows about the harness."""
