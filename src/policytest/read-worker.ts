// A thread that reads pieces of large test files (read.ts starts it): pieces.ts and the yaml package.
import { serveTasks } from '../work/thread.ts';
import { type Piece, type PieceRead, readPiece } from './pieces.ts';

serveTasks<Piece, PieceRead | undefined, never>((piece) => readPiece(piece));
