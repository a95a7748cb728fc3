"""ProfileAnalysis over gRPC: the client (a grpc:// repository and captures)
and the server (`profscope serve`)."""

SCHEME = "grpc://"  # a location naming a ProfileAnalysis server instead of a path
