"""Sessions, hosts and tools of a location (the ProfileAnalysis service's shape): the format registry,
the local repository and opening a path or grpc:// address."""
