"""The text of ``sparsekit-compare``'s tables: aligned columns for a terminal, or GitHub
markdown for a report (``--markdown``), which the benchmark scripts write to
doc/benchmarks.md too."""


def format_table(title, header, rows):
    """Plain-text table with aligned columns."""
    cells = [header] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    out = [title, line]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells[:1]]
    out += [line]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells[1:]]
    return "\n".join(out + [line])


def markdown_table(header, rows):
    """Render ``rows`` (lists of cells) under ``header`` as a GitHub markdown table; a ``|``
    in a cell is escaped."""
    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    return "\n".join([line(header), "|" + "|".join("---" for _ in header) + "|"]
                     + [line(row) for row in rows])
