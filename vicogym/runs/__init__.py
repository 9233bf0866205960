"""The generation-run workflow: episodes (``rollout``), runs of them into Parquet shards
(``generate``, ``shards``), their check (``verify``), the trainers' columns
(``trainer_columns``), rewriter data for LlamaFactory (``llamafactory``), the HTML page of a
run (``report_page``), co-evolution rounds (``evolve``) and the resumable round bookkeeping
they share with synthesis (``rounds``)."""
