"""Studies: grids of runs trained over several time-limited slices (roles of the seeds, the plan,
the budgeted executor, staging of partial results)."""
