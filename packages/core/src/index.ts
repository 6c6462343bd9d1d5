/** Wire schemas, domain types, tagged errors and quote events of gcx. No I/O. */

/** The card: wire form, in-memory form and validation. */
export * as Card from "./Card.js"

/** The problems a configuration error reports: missing variables and refused values, never a value. */
export * as ConfigProblem from "./ConfigProblem.js"

/** The Error body of the service and its documented codes. */
export * as ErrorBody from "./ErrorBody.js"

/** The error taxonomy and the mapping from HTTP answers to errors. */
export * as Errors from "./Errors.js"

/** The error classes and their union schema (also in `Errors`). */
export * as ErrorTaxonomy from "./ErrorTaxonomy.js"

/** What each error means for recovery, as plain data (also in `Errors`). */
export * as ErrorTraits from "./ErrorTraits.js"

/** Request and transaction identifiers. */
export * as Ids from "./Ids.js"

/** What a server that could not listen says: its address and the system's reason. */
export * as ListenFailure from "./ListenFailure.js"

/** Money as people read it: at least two decimals, exactly (`100.00`). */
export * as Money from "./Money.js"

/** The quote resources. */
export * as Quote from "./Quote.js"

/** The events of a quote. */
export * as QuoteEvent from "./QuoteEvent.js"

/** Masking and safe descriptions of decode failures. */
export * as Redaction from "./Redaction.js"

/** A request body read within a size limit, for the HTTP servers of gcx. */
export * as RequestBody from "./RequestBody.js"

/** Paths and header names. */
export * as Routes from "./Routes.js"

/** Reading answers whose optional hints are unreadable. */
export * as TolerantReader from "./TolerantReader.js"

/** The token endpoint's answers. */
export * as Token from "./Token.js"

/** The transaction status and its steps. */
export * as Transaction from "./Transaction.js"

/** Wire encodings of time, money and numbers. */
export * as Wire from "./Wire.js"
