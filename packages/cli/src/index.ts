/** Placeholder until this package's issue lands. */
export {}
