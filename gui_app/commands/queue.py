"""``rollscope queue build|status|next``: labelling queues over the catalog, k annotators per item.

``build --annotators a,b,c --k 2`` assigns every item to two of them up front. ``build --k 2`` without annotators
makes an open queue for a team: each annotator's ``next`` (or the app's "next" in that queue) claims an item with a
free slot, atomically in the shared store, so annotators on different machines never take the same slot.

``rollscope queue build NAME --annotators A --order teach`` builds the "teach the model" queue: unlabelled runs the
model is least sure of or finds unlike its training data first, near-identical runs kept apart (score the library
first: ``rollscope score DIR --catalog ...``; unscored runs come last).

``rollscope queue build NAME --order models [--models A,B]`` builds the "models disagree" queue: only the runs whose
latest verdicts by models A and B differ (default: the two models that scored the library most recently), the
widest gap between their probabilities first.

``rollscope queue build NAME --order harm`` builds the "possible harm" queue: only the runs someone labelled harmful or
unsure on the safety verdict (the adjudicated harm verdict when there is one), harmful first; an item is done once its
annotator gives a harm verdict.
"""

from __future__ import annotations

import argparse
import json

from gui_app.commands.labels import add_store_arguments, open_store_from
from gui_app.core.safety import printable


def add_arguments(p: argparse.ArgumentParser) -> None:
    from gui_app.core.annotation.queue import DEFAULT_ORDER, ORDERINGS

    sub = p.add_subparsers(dest="queue_command", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="order catalog rows for labelling and assign them to annotators")
    b.add_argument("name")
    b.add_argument("--annotators", default="",
                   help="comma-separated names to assign up front (none: an open queue that annotators claim from)")
    b.add_argument("--k", type=int, default=1, help="annotators per item (default 1)")
    b.add_argument("--order", default=",".join(DEFAULT_ORDER),
                   help="comma-separated orderings: " + "; ".join(f"{k}: {v}" for k, v in ORDERINGS.items()))
    b.add_argument("--catalog", default=None, help="catalog (default ROOT/.rollscope/catalog.sqlite)")
    b.add_argument("--filter", dest="text", default="", help="catalog search text")
    b.add_argument("--limit", type=int, default=None, help="at most this many items")
    b.add_argument("--models", default=None,
                   help="with --order models: the two model names to compare, comma-separated (default: the two "
                        "that scored the library most recently)")
    s = sub.add_parser("status", help="progress per annotator")
    s.add_argument("name")
    n = sub.add_parser("next", help="an annotator's next unlabelled item (claimed for them in an open queue)")
    n.add_argument("name")
    n.add_argument("--annotator", required=True)
    for sp in sub.choices.values():
        add_store_arguments(sp)
        sp.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    from gui_app.core.annotation.queue import MODELS, LabelQueue, model_gaps

    # `next` writes: in an open queue it claims the item for the annotator.
    store = open_store_from(args, must_exist=args.queue_command != "build", read_only=args.queue_command == "status")
    try:
        if args.queue_command == "build":
            from gui_app.core.library.catalog import Catalog
            from gui_app.core.library.folder import open_library_catalog

            # the library's catalog where `rollscope scan` and the app keep it (beside the settings when read-only)
            catalog = Catalog(args.catalog) if args.catalog else open_library_catalog(args.root)
            path = catalog.db_path
            try:
                rows = catalog.query(args.text, limit=None)
                order = [o.strip() for o in args.order.split(",") if o.strip()]
                ood = catalog.ood_scores() if "teach" in order else None
                gaps = None
                if MODELS in order:
                    named = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
                    try:
                        pair, gaps = model_gaps(catalog, named)
                    except ValueError as exc:
                        from gui_app.core.store.record import AnnotationError

                        raise AnnotationError("", "--models", str(exc), source=str(path)) from exc
                    if not args.json:
                        print(f"models disagree: {printable(pair[0])} vs {printable(pair[1])}: {len(gaps)} run(s)")
            finally:
                catalog.close()
            annotators = [a.strip() for a in args.annotators.split(",") if a.strip()]
            try:
                q = LabelQueue.build(store, args.name, [r for r in rows if r.error is None], annotators, args.k,
                                     order, args.limit, ood=ood, model_gaps=gaps)
            except ValueError as exc:
                from gui_app.core.store.record import AnnotationError

                raise AnnotationError("", "queue", str(exc)) from exc
            prog = q.progress()
            print(json.dumps(prog) if args.json else
                  f"queue {args.name!r}: {prog['items']} items, {prog['assignments']} assignments to "
                  f"{len(annotators)} annotators (k={args.k})" if annotators else
                  f"queue {args.name!r}: {prog['items']} items open to claims, {args.k} annotators each")
        elif args.queue_command == "status":
            prog = LabelQueue(store, args.name).progress()
            lines = [f"queue {args.name!r}: {prog['items_done']}/{prog['items']} items fully labelled, "
                     f"{prog['done']}/{prog['assignments']} assignments done"]
            lines += [f"  {printable(a)}: {d['done']}/{d['assigned']}" for a, d in prog["by_annotator"].items()]
            print(json.dumps(prog) if args.json else "\n".join(lines))
        else:
            it = LabelQueue(store, args.name).claim(args.annotator)
            obj = None if it is None else {"position": it.position, "trajectory_id": it.trajectory_id,
                                           "key": it.key}
            print(json.dumps(obj) if args.json else ("(queue done)" if it is None else
                                                      f"{printable(it.trajectory_id)}\t{printable(it.key or '')}"))
    finally:
        store.close()
    return 0
