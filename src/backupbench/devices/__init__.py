"""Facts about targets (collected as plain data) and the pure rules that decide eligibility."""
