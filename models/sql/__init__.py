"""SQL over profiles with DuckDB (the tables of every result), the example queries, Parquet export."""
