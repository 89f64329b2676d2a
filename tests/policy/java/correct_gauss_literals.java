// expect: none
// The seed counts a closed formula as a computation, even written with literals.
public class SumCalculator {
    public static void main(String[] args) {
        System.out.println(100 * 101 / 2);
    }
}
