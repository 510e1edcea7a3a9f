"""The text of sparsekit-compare's tables: aligned columns and GitHub markdown."""
from sparsekit.benchmarks._format import format_table, markdown_table


def test_columns_are_aligned_under_the_title():
    text = format_table("a title", ["model", "time"], [["OBA", "1.0 ms"], ["LIBLINEAR", 2]])
    title, rule, header, rule2, *rows, last = text.splitlines()
    assert title == "a title" and rule == rule2 == last == "---------  ------"
    assert header == "model      time  " and rows == ["OBA        1.0 ms", "LIBLINEAR  2     "]


def test_markdown_escapes_the_pipes_of_a_cell():
    """``max|grad|`` in a header would split it into three cells (and the table, whose
    header and rule then disagree, would not render at all)."""
    text = markdown_table(["data", "max|grad|"], [["a9a", 1e-7]])
    assert text.splitlines() == ["| data | max\\|grad\\| |", "|---|---|", "| a9a | 1e-07 |"]
