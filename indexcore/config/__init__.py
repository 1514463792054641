"""Where a topic's configs come from: ``LogConfig`` with Kafka's validators (``log_config``), the broker's
``server.properties`` (``broker_config``), ``kafka-configs --describe`` output (``topic_configs_file``) and a live
cluster's ``DescribeConfigs`` (``topic_configs_live``).
"""
