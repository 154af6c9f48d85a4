/*
 * The state protocol of circulation (state.go and the loops of trigger.go
 * and run.go that call it), for the spin model checker. It is an
 * independent check of explore_test.go, which explores the same protocol by
 * calling the real Go transitions: here they are written again in Promela,
 * so this model can drift from the code and the Go explorer cannot. Keep
 * them in step.
 *
 * The state word is seven variables (reserved, running, canceled,
 * superseded, closed, within, ver), changed together in one atomic CAS step after a separate
 * load step, as Trigger.state is. The version counts modulo MOD (32) instead
 * of 1<<26. The protocol compares versions only for equality; the checks
 * never do: the model keeps ser, the number of advances since the start,
 * beside ver (ver == START + ser - SER0 modulo MOD, checked in every state),
 * and orders versions by it, so the checks stay right across any number of
 * wraps. A run without storms advances the version fewer than 10 times, so
 * START=30 makes it wrap as the Go explorer's start at versionMask-1 does.
 *
 * Fire on an idle Trigger may coalesce into a pending timer armed with no
 * delay whose callback has not claimed it yet (shot.go's coalesce): the
 * array due stands for "the pending shot of this version is due".
 *
 * A storm stands for many calls published while others are preempted: one
 * CAS advances the version by K, chosen among MOD/2+1, MOD-1, MOD and MOD+1
 * (more than half the version space, and all the way round), with the
 * transition of K FireAfter(d > 0) calls (Storm) or K-1 of them and a
 * Suspend (SuspendStorm). The timers the storm's calls superseded are
 * killed (shotDead): a callback that has not yet checked the flag does
 * nothing. The one case excluded is a callback that has passed that check
 * and is preempted before its enter CAS for exactly k*MOD advances (k*2^26
 * calls in the code): its version matches again, and it would start f for
 * an arming long superseded. The model makes such a callback stale (the
 * serial it loads differs from its own, and its CAS also requires the
 * serial unchanged); nothing else compares serials. EXCLUDE=0 lifts the
 * exclusion, and spin then finds that run (run.sh checks that it does).
 * Ordinary calls do not kill the timers they supersede: those are stale by
 * their version, since fewer than MOD calls separate them from the latest.
 *
 * The run's context: an iteration publishes its context in cur, then loads
 * the state and cancels the context if canceled is set (begin); it
 * withdraws cur, then cancels the context, before its finish or abort CAS
 * (end). A Suspend that found a run in flight loads cur, and if it is set,
 * loads the state and cancels that context if canceled is set (cancelRun).
 * A context is an iteration number: it is the one in flight, cxl whether it
 * is cancelled; cancelling an ended one changes nothing.
 *
 * FireWithin, Close and Shutdown (SHAPE=1, the default): Close is a
 * Suspend that also sets closed; Fire, FireAfter and FireWithin do nothing
 * on a closed Trigger, and a run's answer is ignored there. FireWithin
 * keeps the current arming if its timer is pending and unclaimed (due
 * times are not modelled: keeping is a free choice, and the earliest-wins
 * rule is the Go explorer's to check), else publishes advanceWithin, which
 * sets within and does not supersede the run in flight, or, while f runs,
 * reserves (its time has passed). enter clears within. A run that only
 * FireWithin calls came during competes: finish leaves the state idle with
 * within set and the running goroutine reasserts (FireWithin with again,
 * which does nothing once within is clear). Shutdown closes, and hurries
 * the current arming if its timer is pending with a delay: a reservation
 * while f runs, a no-delay timer under a new version otherwise. The place
 * step of an arming (its reassert or hurry when a call superseded it or
 * closed the Trigger on its way to the pending slot) is left to the Go
 * explorer.
 *
 * init picks one of the situations of explore_configs_test.go, or one of
 * four more (running, and a Suspend that published during the run is about
 * to call cancelRun; closed; FireWithin's timer pending; running with a
 * FireWithin's timer pending), and adds up to OPS operations (Fire,
 * FireAfter(d), Suspend, Storm, SuspendStorm, FireWithin, Close,
 * Shutdown); spin explores every choice and every interleaving. Checked in every state
 * (monitor): at most one goroutine holds the running bit, the running bit
 * is set exactly when one does, the other flags only with it, canceled only
 * with superseded; while f runs, every Suspend published during its
 * iteration that has returned has cancelled its context. Checked when f
 * starts: no version runs twice, nothing starts for a version at or after a
 * final Suspend's (or Close's), nothing starts for a version armed after
 * Close or Shutdown published (the flush is Shutdown's own), a Suspend
 * published before begin's load has cancelled the context already. In
 * every state: within is never set with reserved, and closed is never
 * cleared. Checked at every cancel of a live context: a Suspend
 * was published since its iteration began. Checked when a run arms its
 * next timer: it returned true, was not superseded, no FireWithin came
 * during it (its answer competes instead), the Trigger is not closed; and
 * when it competes, only FireWithin calls came. Checked at the end:
 * no fire was lost.
 *
 * Mutants (MUTANT=n), each of which the checks must catch:
 *   1  advance keeps the reservation
 *   2  reserve does not advance the version
 *   3  enter defers without reserving
 *   4  finish clears the running bit before the iteration it owes
 *   5  coalesce does not look at the pending shot again
 *   6  finish judges "superseded" by comparing versions, not by the bit:
 *      caught only when the version has moved on by exactly k*MOD since
 *      the iteration began (STORM=0 or STORMK=17 or 33 let it pass)
 *   7  advance does not mark a run in flight superseded
 *   8  suspend does not set canceled
 *   9  cancelRun cancels when the Suspend's version is newer than the
 *      iteration's, modulo MOD, as the code did before the canceled bit:
 *      caught only when the Suspend's version is MOD/2 or more ahead,
 *      modulo MOD, which takes a storm (STORM=0 or STORMK=33 let it pass)
 *   10 begin loads the state before it publishes its context
 *   11 cancelRun cancels the context it loaded without loading the state
 *   12 FireAfter ignores the closed bit
 *   13 finish acts on the answer on a closed Trigger
 *   14 enter keeps the within bit
 *   15 shutdown loses a reservation
 *   16 finish ignores the within bit: the answer arms its own timer
 *      instead of competing with a FireWithin's arming
 *   17 Close does not set the closed bit
 *
 * Run (the "errors: 0" line is the verdict; run.sh does all of this):
 *   spin -DOPS=1 -a state.pml && gcc -DSAFETY -o pan pan.c && ./pan -m10000
 *   spin -DOPS=1 -DSTART=30 -a state.pml && ...  (the versions wrap)
 *   spin -DOPS=1 -DSTORM=0 -a state.pml && ...   (no storms)
 *   spin -DOPS=1 -DMUTANT=1 -a state.pml && ...  (must find an error)
 */

#ifndef START
#define START 0
#endif
#ifndef OPS
#define OPS 1
#endif
#ifndef STORM
#define STORM 1
#endif
#ifndef STORMK
#define STORMK 0 /* 0: every size of storm below; n: only n */
#endif
#ifndef EXCLUDE
#define EXCLUDE 1 /* 0: the excluded case too (see above): must fail */
#endif
#ifndef MUTANT
#define MUTANT 0
#endif
#ifndef SHAPE
#define SHAPE 1 /* 0: without FireWithin, Close and Shutdown */
#endif

#define NONE    0
#define FIRE    1
#define SUSPEND 2

#define IDLE     0 /* exitIdle */
#define AGAIN    1 /* exitAgain */
#define ARM      2 /* exitArm */
#define STALE    3 /* entryStale */
#define DEFERRED 4 /* entryDeferred */
#define RUN      5 /* entryRun */
#define COMPETE  6 /* exitCompete */

#define MOD 32 /* the version counts modulo MOD */
#define INC(v) (((v) + 1) % MOD)
#define DEC(v) (((v) + MOD - 1) % MOD)
#define SER0 2 /* ser at the start: the situations' stale timers have SER0-1 */
/* newer(a, b) of state.go, modulo MOD: only mutant 9 uses it */
#define NEWER(a, b) ((((a) + MOD - (b)) % MOD) != 0 && (((a) + MOD - (b)) % MOD) < MOD / 2)

/* Trigger.state */
bit reserved, running, canceled, superseded, closed, within;
byte ver = START;

/* Trigger.cur: the context of the iteration in flight (an iteration
 * number), and for mutant 9 the version the iteration began with */
byte cur, curv;

/* bookkeeping for the checks */
short ser = SER0;     /* advances of ver: ver's serial, which does not wrap */
short killed;         /* the timers armed before this serial are killed */
byte owners;          /* goroutines holding the running bit */
bit sup;              /* a call was published since the iteration began */
byte okLeft = 1;      /* how many more times f may return true */
byte panicLeft = 1;   /* how many more times f may panic */
byte last = NONE;     /* the latest Fire, FireAfter or Suspend */
short lastSer;        /* and the serial it published */
bit served;           /* f started for lastSer or later since */
bit ran;              /* f has started */
short lastRun;        /* the serial f last started for */
bit due[MOD];         /* the timer of this version is armed with no delay and unclaimed */
byte itid;            /* iterations begun (the running bit taken, or a reservation taken) */
byte it;              /* the iteration whose context is live (published, not ended) */
bit cxl;              /* and that context is cancelled */
bit susp;             /* a Suspend was published since iteration itid began */
bit sdone;            /* and one such Suspend has returned */
bit inf;              /* f is running (between begin and end) */
bit pend[MOD];        /* a timer of this version is armed and unclaimed */
bit wsup;             /* only FireWithin calls were published since the iteration began */
bit wasClosed;        /* Close or Shutdown has published */
short closedSer;      /* the serial they published, or the flush's */

#define LOAD atomic { lr = reserved; lu = running; lc = canceled; ls = superseded; lcl = closed; lw = within; lv = ver; lser = ser }
#define CURRENT (reserved == lr && running == lu && canceled == lc && superseded == ls && closed == lcl && within == lw && ver == lv)
#define PUBLISH reserved = nr; running = nu; canceled = nc; superseded = ns; closed = ncl; within = nw; ver = nv; ser = ser + nd
#define FORGET lr = 0; lu = 0; lc = 0; ls = 0; lcl = 0; lw = 0; lv = 0; lser = 0; nr = 0; nu = 0; nc = 0; ns = 0; ncl = 0; nw = 0; nv = 0; nd = 0 /* dead after the CAS */
#define LOCALS bit lr, lu, lc, ls, lcl, lw, nr, nu, nc, ns, ncl, nw, ok; byte lv, nv, nd; short lser
/* arm: a new timer for version v, armed as the current serial */
#define ARMT(v, now) due[v] = now; pend[v] = 1; run Timer(v, ser)

/* advance(s), moved on by k versions (a storm's k calls): drops the
 * reservation, marks a run in flight superseded, keeps canceled. */
inline advance(k) {
	nr = 0; nu = lu; nc = lc; ns = ls | lu; ncl = lcl; nw = 0; nv = (lv + k) % MOD; nd = k;
#if MUTANT == 1
	nr = lr;                                       /* advance keeps the reservation */
#endif
#if MUTANT == 7
	ns = ls;                                       /* advance does not mark a run superseded */
#endif
}

/* published: a Fire, FireAfter or Suspend published the serial ser. */
inline published(kind) {
	last = kind; lastSer = ser; served = 0;
	if
	:: owners > 0 -> sup = 1; wsup = 0
	:: else -> skip
	fi
}

/* publishedWithin: FireWithin published the serial ser with its own
 * arming, which does not supersede the run in flight. */
inline publishedWithin() {
	last = FIRE; lastSer = ser; served = 0;
	if
	:: owners > 0 && !sup -> wsup = 1
	:: else -> skip
	fi
}

/* storm: the timers of the calls before a storm, and of its own but the
 * last, are superseded and killed. */
inline storm(k) {
	if
	:: k > 1 ->
	   killed = ser;
	   nd = 0;
	   do                                          /* nd is dead here: reuse it */
	   :: nd < MOD -> due[nd] = 0; pend[nd] = 0; nd++
	   :: else -> break
	   od;
	   nd = 0
	:: else -> skip
	fi
}

/* cancel cancels the context of iteration c, if it is still in flight. */
inline cancel(c) {
	if
	:: c == it && it != 0 -> assert(susp); cxl = 1 /* only a Suspend since it began */
	:: else -> skip                                /* ended: end cancelled it */
	fi
}

/* Fire is FireAfter(0): reserve while running; otherwise coalesce into a
 * due pending timer, or advance and arm one with no delay. */
proctype Fire() {
	LOCALS;
	do
	:: LOAD;
	   if
	   :: lcl -> FORGET; break                     /* closed: does nothing */
	   :: lu && !lcl -> advance(1); nr = 1         /* reserve */
#if MUTANT == 2
	            ; nv = lv; nd = 0                   /* reserve does not advance */
#endif
	   :: !lu && !lcl && due[lv] ->               /* coalesce: the pending shot is due */
	      atomic {
		if
		:: CURRENT -> published(FIRE); ok = 1     /* the state is still s */
		:: else -> ok = 0
		fi
	      };
	      if
	      :: !ok -> FORGET; goto retry
#if MUTANT == 5
	      :: ok -> FORGET; goto coalesced           /* coalesce does not look again */
#else
	      :: ok && due[lv] -> FORGET; goto coalesced /* still due */
	      :: ok && !due[lv] -> skip                 /* claimed meanwhile */
#endif
	      fi;
	      advance(1)
	   :: !lu && !lcl -> advance(1)               /* (the shot may be out of the slot) */
	   fi;
	   atomic {
		if
		:: CURRENT -> PUBLISH; published(FIRE); ok = 1;
		   if
		   :: !lu -> ARMT(nv, 1)
		   :: else -> skip
		   fi
		:: else -> ok = 0
		fi;
		FORGET
	   };
	   if
	   :: ok -> break
	   :: else -> skip
	   fi;
retry:
	   skip
	od;
coalesced:
	skip
}

/* FireAfter(d) with d > 0: advance and arm. With k > 1, a storm of k of
 * them: one timer, for the last. */
proctype FireAfter(byte k) {
	LOCALS;
	do
	:: LOAD;
#if MUTANT != 12
	   if
	   :: lcl -> FORGET; break                     /* closed: does nothing */
	   :: else -> skip
	   fi;
#endif
	   advance(k);
	   atomic {
		if
		:: CURRENT -> PUBLISH; published(FIRE); storm(k); ARMT(nv, 0); ok = 1
		:: else -> ok = 0
		fi;
		FORGET
	   };
	   if
	   :: ok -> break
	   :: else -> skip
	   fi
	od
}

/* Suspend: suspend(s), then cancelRun if a run was in flight. With k > 1,
 * k-1 FireAfter(d > 0) and a Suspend. A Suspend started with mine, the
 * iteration in flight, has published already (with version mv) and is
 * about to call cancelRun. */
proctype Suspend(byte k; byte mine; byte mv; bit cl) {
	LOCALS;
	byte c, cv;
	if
	:: mine != 0 -> goto cancelrun
	:: else -> skip
	fi;
	do
	:: LOAD;
	   advance(k);
	   nc = lc | lu;                              /* suspend: a run in flight is cancelled */
#if MUTANT == 8
	   nc = lc;                                   /* suspend does not set canceled */
#endif
#if MUTANT != 17
	   ncl = lcl | cl;                            /* closeNow: the Trigger is closed */
#endif
	   atomic {
		if
		:: CURRENT -> PUBLISH; published(SUSPEND); storm(k); ok = 1;
		   if
		   :: cl -> wasClosed = 1; closedSer = ser
		   :: else -> skip
		   fi;
		   mv = nv;
		   if
		   :: lu -> susp = 1; mine = itid
		   :: else -> skip
		   fi
		:: else -> ok = 0
		fi;
		FORGET
	   };
	   if
	   :: ok -> break
	   :: else -> skip
	   fi
	od;
cancelrun:
	if
	:: mine != 0 ->                           /* cancelRun */
	   atomic { c = cur; cv = curv };          /* t.cur.Load() */
	   if
	   :: c != 0 ->
#if MUTANT == 9
	      ok = NEWER(mv, cv);                 /* the iteration's version is older */
#elif MUTANT == 11
	      ok = 1;                             /* cancelRun does not load the state */
#else
	      ok = canceled;                      /* canceled(t.state.Load()) */
#endif
	      if
	      :: ok -> atomic { cancel(c) }
	      :: else -> skip
	      fi
	   :: else -> skip
	   fi
	:: else -> skip
	fi;
	atomic {                                  /* return */
		if
		:: mine != 0 && mine == itid -> sdone = 1
		:: else -> skip
		fi;
		mine = 0; mv = 0; c = 0; cv = 0; ok = 0
	}
}

/* FireWithin, or with again a reassert (the answer of a run that only
 * FireWithin calls came during, competing with their arming). Due times
 * are not modelled: keep may keep any pending arming of the current
 * version whose timer is unclaimed, or not, and while f runs the due time
 * may have passed (reserve) or not (advanceWithin). */
proctype FireWithin(bit again) {
	LOCALS;
	bit kept, res;
	do
	:: LOAD;
	   if
	   :: lcl || again && !lw || lu && lr -> FORGET; break /* closed; superseded since; a run is reserved */
	   :: else -> skip
	   fi;
	   if
	   :: pend[lv] ->                             /* keep: the pending shot is due no later */
	      atomic {
		if
		:: CURRENT -> last = FIRE; lastSer = ser; served = 0; ok = 1 /* the state is still s */
		:: else -> ok = 0
		fi
	      };
	      if
	      :: !ok -> FORGET; goto retry
	      :: ok && pend[lv] -> FORGET; kept = 1; break /* still unclaimed: kept */
	      :: ok && !pend[lv] -> skip              /* claimed meanwhile */
	      fi
	   :: true -> skip                            /* due later, or out of the slot */
	   fi;
	   if
	   :: lu -> advance(1); nr = 1; res = 1       /* the due time has passed: reserve */
	   :: true -> nr = 0; nu = lu; nc = lc; ns = ls; ncl = lcl; nw = 1; nv = INC(lv); nd = 1; res = 0 /* advanceWithin */
	   fi;
	   atomic {
		if
		:: CURRENT -> PUBLISH; ok = 1;
		   if
		   :: res -> published(FIRE)
		   :: else -> publishedWithin(); ARMT(nv, 0)
		   fi
		:: else -> ok = 0
		fi;
		FORGET; res = 0
	   };
	   if
	   :: ok -> break
	   :: else -> skip
	   fi;
retry:
	   skip
	od;
	kept = 0
}

/* Shutdown: shutdown(s, hurry), hurry when it finds the current arming's
 * timer pending with a delay, unclaimed (or not: the shot may be out of
 * the slot); an idle Trigger then arms the hurried run with no delay.
 * Once closed, it looks once more, as a hurry of the version it published:
 * an arming handed back meanwhile is hurried then. */
proctype Shutdown() {
	LOCALS;
	bit hurry, again;
	byte hv;
	do
	:: LOAD;
	   if
	   :: again && lv != hv -> FORGET; break /* the second look: superseded meanwhile */
	   :: else -> skip
	   fi;
	   if
	   :: pend[lv] && !due[lv] -> hurry = 1
	   :: true -> hurry = 0
	   fi;
	   if
	   :: hurry && lu -> advance(1); nr = 1; ncl = 1 /* reserve */
	   :: hurry && !lu -> advance(1); ncl = 1
	   :: !hurry -> nr = lr; nu = lu; nc = lc; ns = ls | lu; ncl = 1; nw = lw; nv = lv; nd = 0
#if MUTANT == 15
	      ; nr = 0                                /* shutdown loses a reservation */
#endif
	   fi;
	   atomic {
		if
		:: CURRENT -> PUBLISH; ok = 1; wasClosed = 1; closedSer = ser;
		   if
		   :: owners > 0 -> sup = 1; wsup = 0
		   :: else -> skip
		   fi;
		   if
		   :: hurry && !lu -> ARMT(nv, 1)
		   :: else -> skip
		   fi;
		   hv = nv
		:: else -> ok = 0
		fi;
		FORGET; hurry = 0
	   };
	   if
	   :: ok && again -> break
	   :: ok -> again = 1 /* Shutdown looks at the slot once more, now that the Trigger is closed */
	   :: else -> skip
	   fi
	od
}

/* Timer is a timer callback for version v, armed as the serial sv:
 * shot.run's claim and shotDead check, then Trigger.start. */
proctype Timer(byte v; short sv) {
	LOCALS;
	byte x;
	atomic {
		if
		:: sv < killed -> goto dead               /* superseded and killed */
		:: else -> due[v] = 0; pend[v] = 0        /* claim */
		fi
	};
	do
	:: LOAD;
	   if
	   :: lv != v -> break                        /* stale */
#if EXCLUDE
	   :: lv == v && lser != sv -> break          /* the excluded case: see the top */
#endif
	   :: lv == v && (lser == sv || !EXCLUDE) ->
	      if
	      :: lu -> nr = 1; x = DEFERRED
#if MUTANT == 3
	               ; nr = lr                        /* enter defers without reserving */
#endif
	      :: !lu -> nr = lr; x = RUN
	      fi;
	      nu = 1; nc = lc; ns = ls; ncl = lcl; nv = lv; nd = 0;
	      nw = 0                                  /* no longer pending */
#if MUTANT == 14
	      ; nw = lw                               /* enter keeps the within bit */
#endif
	   fi;
	   atomic {
		if
		:: CURRENT && (ser == lser || !EXCLUDE) -> PUBLISH; ok = 1;
		   if
		   :: x == RUN -> owners++; sup = 0; wsup = 0; itid++; susp = 0; sdone = 0; run Loop(v, sv, 0)
		   :: else -> skip
		   fi
		:: else -> ok = 0
		fi;
		FORGET; x = 0
	   };
	   if
	   :: ok -> break
	   :: else -> skip
	   fi
	od;
dead:
	skip
}

/* Loop is Trigger.loop: the goroutine holding the running bit, about to
 * begin an iteration for version v (serial vs), or inside f already. */
proctype Loop(byte v; short vs; bit inside) {
	LOCALS;
	bit fok, fnow, sb, panicked;
	byte x;
	if
	:: inside -> goto infunc
	:: else -> skip
	fi;
begin:
#if MUTANT == 10
	atomic { lc = canceled; sb = susp };                /* begin loads first */
	atomic { cur = itid; curv = v; it = itid; cxl = 0 };
#else
	atomic { cur = itid; curv = v; it = itid; cxl = 0 }; /* t.cur.Store(ctx) */
	atomic { lc = canceled; sb = susp };                /* canceled(t.state.Load()) */
#endif
	if
	:: lc -> atomic { cancel(it) }
	:: else -> skip
	fi;
	atomic {                                            /* f starts */
		assert(!sb || cxl);                             /* begin cancelled it */
		assert(!(ran && vs <= lastRun));                /* no version runs twice */
		assert(!(last == SUSPEND && vs >= lastSer));    /* Suspend wins */
		assert(!(wasClosed && vs > closedSer));         /* nothing armed after the close runs */
		if
		:: last == FIRE && vs >= lastSer -> served = 1
		:: else -> skip
		fi;
		ran = 1; lastRun = vs; inf = 1; lc = 0; sb = 0
	};
infunc:
	if                                                  /* f returns */
	:: atomic { inf = 0; fok = 0 }
	:: atomic { okLeft > 0 -> okLeft--; inf = 0; fok = 1; fnow = 1 } /* (0, true) */
	:: atomic { okLeft > 0 -> okLeft--; inf = 0; fok = 1 }           /* (d, true) */
	:: atomic { panicLeft > 0 -> panicLeft--; inf = 0; panicked = 1 }
	fi;
	cur = 0;                                            /* end: t.cur.Store(nil) */
	atomic { it = 0; cxl = 0 };                         /* ctx.cancel() */
	if
	:: panicked -> goto abort
	:: else -> skip
	fi;
	do                                                  /* finish */
	:: LOAD;
	   nr = 0; nu = 0; nc = 0; ns = 0; ncl = lcl; nw = 0; nv = lv; nd = 0;
	   if
	   :: lr -> nu = 1; x = AGAIN
#if MUTANT == 4
	            ; nu = 0                                /* finish clears running first */
#endif
#if MUTANT == 6
	   :: !lr && fok && lv == v -> nv = INC(lv); nd = 1; x = ARM /* superseded by the version */
	   :: !lr && !(fok && lv == v) -> x = IDLE
#else
#if MUTANT == 13
	   :: !lr && fok && !ls && !lw -> nv = INC(lv); nd = 1; x = ARM /* acts on the answer when closed */
	   :: !lr && fok && !ls && lw && !lcl -> nw = 1; x = COMPETE
	   :: !lr && !(fok && !ls) || !lr && lcl && lw -> nw = lw; x = IDLE
#elif MUTANT == 16
	   :: !lr && fok && !ls && !lcl -> nv = INC(lv); nd = 1; x = ARM /* ignores the within bit */
	   :: !lr && !(fok && !ls && !lcl) -> nw = lw; x = IDLE
#else
	   :: !lr && fok && !ls && !lcl && !lw -> nv = INC(lv); nd = 1; x = ARM
	   :: !lr && fok && !ls && !lcl && lw -> nw = 1; x = COMPETE /* a FireWithin's arming is pending */
	   :: !lr && !(fok && !ls && !lcl) -> nw = lw; x = IDLE
#endif
#endif
	   fi;
	   atomic {
		if
		:: CURRENT -> PUBLISH; ok = 1;
		   if
		   :: x == AGAIN -> sup = 0; wsup = 0; itid++; susp = 0; sdone = 0;
		      v = nv; vs = ser; fok = 0; fnow = 0
		   :: x == ARM -> assert(fok && !sup); assert(!lcl); assert(!wsup); owners--; ARMT(nv, fnow)
		   :: x == COMPETE -> assert(fok && !sup && wsup && !lcl); owners--; run FireWithin(1)
		   :: x == IDLE -> owners--
		   fi
		:: else -> ok = 0
		fi;
		FORGET
	   };
	   if
	   :: ok -> break
	   :: else -> skip
	   fi
	od;
	if
	:: x == AGAIN -> x = 0; goto begin
	:: else -> goto done
	fi;
abort:
	do
	:: LOAD;
	   nr = 0; nu = 0; nc = 0; ns = 0; ncl = lcl;
	   if
	   :: lr -> nv = INC(lv); nd = 1; nw = 0; x = ARM
	   :: else -> nv = lv; nd = 0; nw = lw; x = IDLE
	   fi;
	   atomic {
		if
		:: CURRENT -> PUBLISH; owners--; ok = 1;
		   if
		   :: x == ARM && lcl -> closedSer = ser; ARMT(nv, 1) /* the reservation Shutdown let stand: the flush */
		   :: x == ARM && !lcl -> ARMT(nv, 1)
		   :: else -> skip
		   fi
		:: else -> ok = 0
		fi;
		FORGET
	   };
	   if
	   :: ok -> break
	   :: else -> skip
	   fi
	od;
done:
	skip
}

/* The invariants on the state word, and the Suspend's cancellation, in
 * every reachable state. */
active proctype monitor() {
end:
	atomic {
		!(owners <= 1 && running == (owners > 0) &&
		  (running || !(reserved || canceled || superseded)) &&
		  (!canceled || superseded) &&
		  ver == (START + ser - SER0) % MOD &&
		  !(inf && sdone && !cxl) &&
		  !(within && reserved) && (closed || !wasClosed)) ->
		assert(owners <= 1 && running == (owners > 0));  /* one goroutine in f */
		assert(running || !(reserved || canceled || superseded));
		assert(!canceled || superseded);
		assert(ver == (START + ser - SER0) % MOD);
		assert(!(inf && sdone && !cxl));                 /* a returned Suspend cancelled f */
		assert(!(within && reserved));
		assert(closed || !wasClosed)                     /* the closed bit is never cleared */
	}
}

init {
	byte i, k;
	atomic {
		if
		:: skip                                               /* idle */
		:: last = FIRE; lastSer = SER0; pend[ver] = 1; run Timer(ver, SER0) /* timer pending */
		:: last = FIRE; lastSer = SER0; due[ver] = 1; pend[ver] = 1; run Timer(ver, SER0) /* no-delay timer pending */
		:: last = SUSPEND; lastSer = SER0; pend[DEC(ver)] = 1; run Timer(DEC(ver), SER0 - 1) /* stale timer */
		:: last = FIRE; lastSer = SER0; pend[DEC(ver)] = 1; pend[ver] = 1;
		   run Timer(DEC(ver), SER0 - 1); run Timer(ver, SER0)
#if SHAPE
		:: closed = 1; wasClosed = 1; closedSer = SER0;      /* closed by Close */
		   last = SUSPEND; lastSer = SER0
		:: within = 1; last = FIRE; lastSer = SER0; pend[ver] = 1; run Timer(ver, SER0) /* FireWithin's timer pending */
		:: running = 1; within = 1; owners = 1; wsup = 1;     /* running, FireWithin during it */
		   ran = 1; lastRun = SER0 - 1; last = FIRE; lastSer = SER0;
		   itid = 1; it = 1; cur = 1; curv = DEC(ver); inf = 1; run Loop(DEC(ver), SER0 - 1, 1);
		   pend[ver] = 1; run Timer(ver, SER0)
#endif
		:: running = 1; owners = 1; ran = 1; lastRun = SER0;  /* running */
		   last = FIRE; lastSer = SER0; served = 1;
		   itid = 1; it = 1; cur = 1; curv = ver; inf = 1; run Loop(ver, SER0, 1)
		:: running = 1; owners = 1; ran = 1; lastRun = SER0;  /* running, stale timer */
		   last = FIRE; lastSer = SER0; served = 1;
		   itid = 1; it = 1; cur = 1; curv = ver; inf = 1; run Loop(ver, SER0, 1);
		   pend[DEC(ver)] = 1; run Timer(DEC(ver), SER0 - 1)
		:: running = 1; reserved = 1; superseded = 1; owners = 1; sup = 1; /* running, fired */
		   ran = 1; lastRun = SER0 - 1; last = FIRE; lastSer = SER0;
		   itid = 1; it = 1; cur = 1; curv = DEC(ver); inf = 1; run Loop(DEC(ver), SER0 - 1, 1)
		:: running = 1; superseded = 1; owners = 1; sup = 1;  /* running, fired after */
		   ran = 1; lastRun = SER0 - 1; last = FIRE; lastSer = SER0;
		   itid = 1; it = 1; cur = 1; curv = DEC(ver); inf = 1; run Loop(DEC(ver), SER0 - 1, 1);
		   pend[ver] = 1; run Timer(ver, SER0)
		:: running = 1; superseded = 1; canceled = 1; owners = 1; sup = 1; /* running, suspended */
		   ran = 1; lastRun = SER0 - 1; last = SUSPEND; lastSer = SER0;
		   itid = 1; it = 1; cur = 1; curv = DEC(ver); inf = 1; susp = 1; sdone = 1; cxl = 1;
		   run Loop(DEC(ver), SER0 - 1, 1)
		:: running = 1; superseded = 1; canceled = 1; owners = 1; sup = 1; /* running, suspending */
		   ran = 1; lastRun = SER0 - 1; last = SUSPEND; lastSer = SER0;
		   itid = 1; it = 1; cur = 1; curv = DEC(ver); inf = 1; susp = 1;
		   run Loop(DEC(ver), SER0 - 1, 1); run Suspend(1, 1, ver, 0)
		fi;
		i = 0;
		do
		:: i < OPS -> run Fire(); i++
		:: i < OPS -> run FireAfter(1); i++
		:: i < OPS -> run Suspend(1, 0, 0, 0); i++
#if SHAPE
		:: i < OPS -> run FireWithin(0); i++
		:: i < OPS -> run Suspend(1, 0, 0, 1); i++          /* Close */
		:: i < OPS -> run Shutdown(); i++
#endif
#if STORM
		:: i < OPS ->
#if STORMK
		   k = STORMK;                                /* one size only */
#else
		   if
		   :: k = MOD / 2 + 1
		   :: k = MOD - 1
		   :: k = MOD
		   :: k = MOD + 1
		   fi;
#endif
		   if
		   :: run FireAfter(k)
		   :: run Suspend(k, 0, 0, 0)
		   fi;
		   k = 0; i++
#endif
		:: break
		od
	};
	_nr_pr == 2;                                          /* everyone else has finished */
	assert(last != FIRE || served)                        /* no lost fire */
}
