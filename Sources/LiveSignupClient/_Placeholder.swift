// Temporary: lets the package build until the client's files land. Delete when they do.
