-- What the queries a catalog answers in SQL before its rows are cached (Catalog._cold_query: the library's first
-- count and page of a catalog just opened) read instead of every row (100 MB at 100,000 runs: 40 ms before any
-- work): narrow indexes, and indexes walked in a column's order that stop at the page's end. SQLite keeps an index in
-- step with its table itself (no trigger), and fills these from an older file's rows here.
--
-- A search text holds no NUL (a scan writes a space): the text index's trigram tokenizer stops at one, and would then
-- not find a word after it that LIKE and instr find. Each NUL of the texts that hold one is cut out of its bytes in
-- turn (replace() cannot: it takes a NUL to replace for an empty text). The text index follows the change (its update
-- trigger); the rows' version moves, so no search text read before outlives it.
UPDATE trajectories SET search = (
    WITH RECURSIVE cut(rest, done) AS (
        SELECT CAST(search AS BLOB), ''
        UNION ALL
        SELECT substr(rest, instr(rest, x'00') + 1), done || substr(rest, 1, instr(rest, x'00') - 1) || ' '
        FROM cut WHERE instr(rest, x'00') > 0)
    SELECT CAST(done || rest AS TEXT) FROM cut WHERE instr(rest, x'00') = 0)
WHERE instr(search, char(0)) > 0;
UPDATE meta SET rows_version = rows_version + 1;
-- The outcome with the library key and the search text beside it: for each run an outcome filter keeps, whether it
-- has a score is looked up in the scores' index, and a searched word in its text, without reading the run's row; and
-- a word the text index cannot find (shorter than a trigram) is looked for in every row's search text read from here
-- (19 MB at 100,000 runs).
DROP INDEX trajectories_success;
CREATE INDEX trajectories_success ON trajectories(success, ref, search);
-- A page sorted by the run's length walks these in order and stops at its end; the key breaks the many ties (a
-- library has a few dozen distinct step counts) without reading the rows.
CREATE INDEX trajectories_duration ON trajectories(duration, key);
CREATE INDEX trajectories_n_steps ON trajectories(n_steps, key);
-- The instructions SQLite's NOCASE may order otherwise than the cached rows (str.casefold): those beyond ASCII, and
-- those holding a NUL (length() counts the characters before it). Almost always none: the query that asks (see
-- Catalog._ascii_instructions) reads an empty index rather than every instruction.
CREATE INDEX trajectories_instruction_beyond_ascii ON trajectories(instruction)
    WHERE length(instruction) != length(CAST(instruction AS BLOB));
