// JSONValue and its reader moved down to StrictJSON (the one strict JSON reader of every body and
// profile); GraphQL's users keep seeing them through this module.
@_exported public import StrictJSON
