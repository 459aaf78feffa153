"""Campaigns: the studies of published papers built on the framework, each a package of its own
(its claims, seeds, published numbers, tables, figures, findings and study declarations). The
framework below knows a campaign only by name (normlab.report.campaigns), never by import."""
