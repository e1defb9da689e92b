"""HTTP: the route table's type (`routes`), reading requests (`requests`), answers (`answers`)
and the middlewares (`middlewares`)."""
