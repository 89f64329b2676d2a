"""Background work on RQ: queues, the tasks they run, and the sweeper that requeues stragglers."""
