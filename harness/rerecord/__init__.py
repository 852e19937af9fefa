"""Re-recording as a reviewed change: ``record`` writes new cassettes beside the old (``pending``), a drift report
says what changed and what that did (``drift_report``), and ``record --accept`` moves them into place."""
