"""The query side: identifiers in a question → registry matches → chunks fetched by filter → a hint."""
