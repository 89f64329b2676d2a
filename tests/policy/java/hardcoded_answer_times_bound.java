// expect: HardcodedOnly
// The task's 100 next to the answer itself does not make a formula.
public class SumCalculator {
    public static void main(String[] args) {
        System.out.println(5050 * 100 / 100);
    }
}
