module cacheroute/tools/jaeger

go 1.26
