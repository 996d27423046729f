"""Products of small symbolic matrices and components of vectors, without SymPy's slow paths
(domain matrices, searches of the whole frame or point graph)."""
from __future__ import annotations

from sympy import Add, Matrix, S
from sympy.matrices.exceptions import ShapeError
from sympy.physics.vector import Point, ReferenceFrame, Vector

__all__ = ["components", "matrix_product", "position_from"]


def matrix_product(a: Matrix, b: Matrix) -> Matrix:
    """The product a b, each entry one Add of its non-zero products: SymPy's own product converts
    to a domain matrix and adds term by term, which was a third of a humanoid's derivation."""
    if a.cols != b.rows:
        raise ShapeError(f"matrices of {a.shape} and {b.shape} cannot be multiplied")
    left, right = a.tolist(), b.tolist()
    inner = range(a.cols)
    entries = []
    for row in left:
        for j in range(b.cols):
            terms = [row[k] * right[k][j] for k in inner if row[k] is not S.Zero and right[k][j] is not S.Zero]
            entries.append(Add(*terms) if len(terms) > 1 else terms[0] if terms else S.Zero)
    return Matrix(a.rows, b.cols, entries)


def components(vector: Vector, frame: ReferenceFrame) -> Matrix:
    """`vector`'s components in `frame`, as ``vector.to_matrix(frame)``; each part already in
    `frame` taken as it is: SymPy's ``to_matrix`` asks for ``frame.dcm(frame)``, whose first call
    per frame searches every path of the frame graph (quadratic in its size: iCub has 640)."""
    total = Matrix([0, 0, 0])
    for column, part_frame in vector.args:
        total += column if part_frame is frame else matrix_product(frame.dcm(part_frame), column)
    return total


def position_from(point: Point, base: Point) -> Vector:
    """`point`'s position from `base`, read where SymPy keeps a neighbour's (``_pos_dict``), else
    by SymPy's own search (``pos_from``, which lists every path of the point graph)."""
    return point._pos_dict[base] if base in point._pos_dict else point.pos_from(base)
