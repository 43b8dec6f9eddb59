// Package query is ebb's query language: a subset of Azure Cosmos DB's NoSQL
// (SQL) queries, evaluated over JSON documents, and the planner that maps a
// query onto the engine's secondary indexes. It is pure: no I/O, no engine
// types; the engine parses and binds a query here, asks for a Plan, reads
// candidate items from its roaring-bitmap indexes, and calls Match, Project,
// OrderKey and Window on the documents. (*Bound).Run is the brute-force
// reference that the indexed execution must agree with exactly.
//
// # Language
//
//	SELECT [TOP n] * | VALUE expr | expr [AS name], ...
//	FROM [container [AS]] alias
//	[WHERE expr]
//	[ORDER BY alias.path [ASC|DESC]]
//	[OFFSET n LIMIT m]
//
// also SELECT VALUE COUNT(arg) and SELECT COUNT(arg) [AS name], where arg is
// 1, the alias, or an expression (an item counts when arg is defined).
// Keywords are case-insensitive; -- starts a comment. Expressions: paths
// (c.a.b, c["a b"], c.a[0]), literals (numbers, 'single' or "double" quoted
// strings with JSON escapes plus \', true, false, null, [arrays], {objects}),
// parameters (@name), = != <> < <= > >=, AND, OR, NOT, [NOT] IN (...),
// [NOT] BETWEEN a AND b, and the functions IS_DEFINED, IS_NULL, IS_BOOL,
// IS_NUMBER, IS_STRING, IS_ARRAY, IS_OBJECT, IS_PRIMITIVE,
// STARTSWITH/ENDSWITH/CONTAINS(s, t [, ignoreCase]), ARRAY_CONTAINS(arr, x
// [, partial]), ARRAY_LENGTH, LENGTH, LOWER, UPPER. Not supported: JOIN,
// subqueries, GROUP BY, DISTINCT, arithmetic, aggregates other than COUNT,
// ORDER BY on more than one path, and the undefined literal. TOP, OFFSET and
// LIMIT take integers from 0 to math.MaxInt64 or parameters. COUNT cannot
// be combined with ORDER BY, OFFSET/LIMIT or TOP. In FROM root r or FROM
// c AS x the container name is ignored and the alias (r, x) is what paths
// start with. Query text is held to MaxLength, MaxDepth, MaxTerms and
// MaxParams (errors matching ErrLimit).
//
// # Errors
//
// Every error about a query's text matches ErrInvalidQuery. Grammar errors
// are *SyntaxError values that also match ErrSyntax (which wraps
// ErrInvalidQuery) and carry the byte offset, line, column and token.
// Bind's errors (missing or unused parameter, bad TOP/OFFSET/LIMIT value)
// match ErrInvalidQuery. Indexing-policy paths fail with ErrInvalidPath and
// JSON input with ErrInvalidJSON.
//
// # Semantics
//
// They follow Cosmos DB's documentation; where it is silent, the choice made
// is stated here.
//   - A path to a missing property, an index out of range, or a step
//     into a non-object is undefined.
//   - = and != are undefined when either side is undefined or the kinds
//     differ; otherwise they compare by value, deeply for arrays and objects
//     (object member order does not matter; numbers as float64, so 0 = -0).
//   - < <= > >= are undefined across kinds and for arrays and objects; they
//     are defined for numbers, strings (ordinal, by UTF-8 bytes), booleans
//     (false < true) and null (null <= null is true, null < null false), as
//     the documentation's table of same-kind comparisons says.
//   - Logic is three-valued: false AND x is false, true OR x is true, NOT
//     of a non-boolean is undefined, and anything else involving a
//     non-boolean is undefined. WHERE keeps an item only when the predicate
//     is exactly true.
//   - x IN (list) is undefined when x is undefined, else true when x equals
//     a member and false otherwise (members of other kinds included), so
//     NOT IN keeps every defined value that is not listed.
//   - Functions given arguments of the wrong kinds return undefined.
//   - ORDER BY sorts by Compare: undefined < null < false < true < numbers <
//     strings < arrays < objects (Cosmos DB's documented order across
//     kinds; arrays and objects compare structurally here). Equal keys are
//     ordered by id ascending, also under DESC, so results are
//     deterministic.
//   - SELECT * returns the document; SELECT VALUE e drops items where e is
//     undefined; SELECT a, b AS x returns an object of the defined items
//     (named by alias, else the path's last property name, else $1, $2, ...);
//     undefined array elements and object members are dropped.
//   - TOP/OFFSET/LIMIT apply after ORDER BY and count emitted results.
//
// # Index terms and plans
//
// The engine indexes, for each term path, the Key of every scalar found
// there (see Terms and Key). Term paths and indexing-policy paths share one
// syntax (see PathPolicy); Key's byte order is Compare's order among
// scalars. (*Bound).Plan turns WHERE into an Access tree over those terms
// and says whether it is Exact; see Plan for the rules.
package query
